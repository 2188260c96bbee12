// The Node.js client of the capture: the built-in fetch() (undici) with its
// defaults. Usage: node nodeclient.mjs BASE_URL PATH... (run with
// NODE_TLS_REJECT_UNAUTHORIZED=0 for the self-signed origins). Makes the
// requests of the script flow (scripted.py: a GET of each PATH, then a form
// POST) and prints the Node version.
const base = process.argv[2];
for (const p of process.argv.slice(3)) {
  const r = await fetch(base + p);
  await r.arrayBuffer();
}
const r = await fetch(base + "/login", {
  method: "POST",
  body: new URLSearchParams({ user: "ada@example.org", pass: "correct horse" }),
});
await r.arrayBuffer();
console.log(process.version);
