// The Go client of the capture: net/http's defaults, as a Go scraper uses it.
// Usage: goclient BASE_URL PATH... Makes the requests of the script flow
// (scripted.py: a GET of each PATH, then a form POST) and prints the Go
// version.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
)

func main() {
	base := os.Args[1]
	// The default transport, with certificate checks off for the
	// self-signed origins. A custom TLS config turns HTTP/2 off unless
	// asked for; ask, so that it behaves as http.DefaultTransport does.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	tr.ForceAttemptHTTP2 = true
	c := &http.Client{Transport: tr}
	for _, p := range os.Args[2:] {
		r, err := c.Get(base + p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	r, err := c.PostForm(base+"/login", url.Values{"user": {"ada@example.org"}, "pass": {"correct horse"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	fmt.Println(runtime.Version())
}
