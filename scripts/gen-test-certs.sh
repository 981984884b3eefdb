#!/usr/bin/env bash
# Regenerates the test-only TLS material in tests/testdata/tls/ (valid for 100 years).
#   ca.pem                 test CA that signs server.pem and client.pem
#   server.pem/-key.pem    server certificate for 127.0.0.1, ::1 and localhost
#   client.pem/-key.pem    client certificate, CN=test-client
#   proxy-client.pem/-key  client certificate, CN=front-proxy, signed by requestheader-ca.pem
#   untrusted-*.pem        a server certificate from a CA no test trusts
# Never use these keys outside tests.
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/tests/testdata/tls"
mkdir -p "$out"
cd "$out"
days=36500
san="subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"
ca() {  # name cn
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1-key.pem" -out "$1.pem" -days $days \
    -subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}
leaf() {  # name cn ca ext
  openssl req -newkey rsa:2048 -nodes -keyout "$1-key.pem" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3-key.pem" -CAcreateserial -out "$1.pem" \
    -days $days -extfile <(printf '%s\n' "$4") 2>/dev/null
  rm -f "$1.csr"
}
ca ca "modelmetrics test CA"
ca requestheader-ca "modelmetrics test request-header CA"
ca untrusted-ca "modelmetrics untrusted CA"
leaf server "localhost" ca "$san
extendedKeyUsage=serverAuth"
leaf client "test-client" ca "extendedKeyUsage=clientAuth"
leaf proxy-client "front-proxy" requestheader-ca "extendedKeyUsage=clientAuth"
leaf untrusted-server "localhost" untrusted-ca "$san
extendedKeyUsage=serverAuth"
rm -f ./*.srl
