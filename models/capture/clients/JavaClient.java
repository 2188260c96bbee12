// The Java client of the capture: java.net.http.HttpClient with its defaults
// (HTTP/2 preferred, which over plain HTTP means an h2c upgrade attempt).
// Usage: java JavaClient.java BASE_URL PATH... (single-file source launch),
// with -Djdk.internal.httpclient.disableHostnameVerification=true for the
// self-signed origins. Makes the requests of the script flow (scripted.py: a
// GET of each PATH, then a form POST) and prints the Java version.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

public class JavaClient {
    public static void main(String[] args) throws Exception {
        String base = args[0];
        TrustManager[] trustAll = { new X509TrustManager() {
            public void checkClientTrusted(X509Certificate[] c, String a) {}
            public void checkServerTrusted(X509Certificate[] c, String a) {}
            public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
        } };
        SSLContext ssl = SSLContext.getInstance("TLS");
        ssl.init(null, trustAll, null);
        HttpClient c = HttpClient.newBuilder().sslContext(ssl).build();
        for (String p : java.util.Arrays.copyOfRange(args, 1, args.length)) {
            c.send(HttpRequest.newBuilder(URI.create(base + p)).build(), HttpResponse.BodyHandlers.discarding());
        }
        HttpRequest post = HttpRequest.newBuilder(URI.create(base + "/login"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .POST(HttpRequest.BodyPublishers.ofString("user=ada%40example.org&pass=correct+horse"))
            .build();
        c.send(post, HttpResponse.BodyHandlers.discarding());
        System.out.println(System.getProperty("java.version"));
    }
}
