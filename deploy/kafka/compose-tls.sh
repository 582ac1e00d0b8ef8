#!/bin/sh
# docker-compose.yml's one-shot `kafka-tls` service: a CA and the broker's certificate for the
# compose network (DNS kafka) and the host's loopback (127.0.0.1, localhost), made once into the
# kafka-tls volume (the same openssl steps as scripts/stack-kafka-secure.sh for the local secure
# broker). The broker reads broker.keystore.pem (its key, owned by the Kafka image's user 1000,
# mode 0600); the services and host clients trust ca.pem (KAFKA_SSL_CA). The CA's key stays in the
# volume for renewals: `docker compose run --rm kafka-tls renew` makes a new broker certificate.
set -eu
dir=${KAFKA_TLS_DIR:-/tls}
kafka_uid=${KAFKA_UID:-1000}
cd "$dir"
if [ "${1:-}" = renew ]; then rm -f broker.keystore.pem; fi
if [ -s ca.pem ] && [ -s broker.keystore.pem ]; then
  echo "kafka-tls: reusing the CA and the broker certificate in $dir"
  exit 0
fi
umask 077
if [ ! -s ca.pem ] || [ ! -s ca.key ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 825 \
    -subj "/CN=event-ingestion compose Kafka CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
fi
openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=kafka"
printf 'subjectAltName=DNS:kafka,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >broker.ext
openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.pem -days 825 -extfile broker.ext
# Kafka's PEM keystore: the (PKCS#8, unencrypted) key, then the certificate chain.
cat broker.key broker.pem ca.pem >broker.keystore.pem
rm -f broker.csr broker.ext broker.key
chown "$kafka_uid:$kafka_uid" broker.keystore.pem
chmod 0600 broker.keystore.pem ca.key
chmod 0644 ca.pem broker.pem
echo "kafka-tls: made a CA and a broker certificate in $dir (trust ca.pem)"
