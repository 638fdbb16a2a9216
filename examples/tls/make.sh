#!/bin/sh
# Regenerates the LOCAL-DEVELOPMENT TLS material of the example webhook receiver:
#   ca.pem                        a throwaway CA (its key is deleted: nothing else is ever signed by it)
#   localhost.pem, localhost-key.pem  localhost, 127.0.0.1 and ::1, signed by that CA; also
#                                 10.89.77.1, this host as the containers of the trial stack
#                                 see it (compose.trial.yaml, the network svc_trial)
# `svc serve --demo` on the embedded database trusts ca.pem for webhook deliveries (and allows
# loopback targets), so `node examples/webhook-receiver.mjs` receives verified webhooks locally.
# The private key is public (it is in the repository): never trust ca.pem anywhere else.
set -eu
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
days=36500
openssl ecparam -name prime256v1 -genkey -noout -out "$work/ca-key.pem"
openssl req -x509 -new -key "$work/ca-key.pem" -sha256 -days "$days" \
  -subj '/CN=SVC local development CA (examples only)' \
  -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' -out ca.pem
openssl ecparam -name prime256v1 -genkey -noout -out "$work/localhost-key.ec"
openssl pkcs8 -topk8 -nocrypt -in "$work/localhost-key.ec" -out localhost-key.pem
openssl req -new -key localhost-key.pem -subj '/CN=localhost' -out "$work/localhost.csr"
cat > "$work/localhost.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1,IP:10.89.77.1
EXT
openssl x509 -req -in "$work/localhost.csr" -CA ca.pem -CAkey "$work/ca-key.pem" -CAcreateserial \
  -CAserial "$work/ca.srl" -sha256 -days "$days" -extfile "$work/localhost.ext" -out localhost.pem
