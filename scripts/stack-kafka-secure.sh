# The secure mode of scripts/stack.sh (STACK_KAFKA_SECURITY=sasl_ssl): a second broker with TLS,
# SASL (SCRAM-SHA-256/512, PLAIN) and ACLs, on its own ports and under its own state directory
# ($STACK_DIR/kafka-secure), so it runs beside the plaintext one. Sourced by stack.sh; uses its
# helpers (say, fail, render) and its KAFKA_DIR.
#
# Under $KAFKA_DIR it keeps:
#   tls/ca.pem                 the CA clients trust (KAFKA_SSL_CA)
#   tls/broker.keystore.pem    the broker's key and certificate (127.0.0.1, localhost)
#   credentials/<user>.password  one random password per SCRAM user (KAFKA_SASL_PASSWORD_FILE)
#   env/<user>.env             the client settings of each user, to `source` (set -a) or read
#   admin.properties           the super user's settings for Kafka's Java tools
#   oauth/issuer.key, jwks.json  a local token issuer for OAUTHBEARER: its signing key and the
#                              public key set the broker verifies tokens with
#   env/oauth-issuer.env       where that key is and the issuer and audience a token must name
# Created once and reused; `reset` in this mode deletes them with the data.

# admin is the super user (setup, tools); the others are the services' principals
# (docs/security.md). The broker's controller principal is not a SCRAM user.
SECURE_USERS=(admin ingest console processor crm-sink)
KAFKA_TLS_DIR=$KAFKA_DIR/tls
KAFKA_CRED_DIR=$KAFKA_DIR/credentials
KAFKA_ADMIN_PROPS=$KAFKA_DIR/admin.properties
KAFKA_OAUTH_DIR=$KAFKA_DIR/oauth
# What a token must name to be accepted (iss, aud); the principal is its subject (sub).
KAFKA_OAUTH_ISSUER=event-ingestion-local
KAFKA_OAUTH_AUDIENCE=kafka

secure_password() { printf '%s' "$(<"$KAFKA_CRED_DIR/$1.password")"; }

secure_certs() {
  local t=$KAFKA_TLS_DIR log=$KAFKA_DIR/logs/openssl.log
  [[ -s $t/ca.pem && -s $t/broker.keystore.pem ]] && return 0
  command -v openssl >/dev/null || fail kafka "openssl not found (apt-get install openssl)"
  say kafka "creating a CA and a broker certificate in $t"
  (
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/ca.key" -out "$t/ca.pem" -days 825 \
      -subj "/CN=event-ingestion local Kafka CA" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
      openssl req -newkey rsa:2048 -nodes -keyout "$t/broker.key" -out "$t/broker.csr" -subj "/CN=localhost" &&
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$t/broker.ext" &&
      openssl x509 -req -in "$t/broker.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
        -out "$t/broker.pem" -days 825 -extfile "$t/broker.ext" &&
      # Kafka's PEM keystore: the (PKCS#8, unencrypted) key, then the certificate chain.
      cat "$t/broker.key" "$t/broker.pem" "$t/ca.pem" >"$t/broker.keystore.pem"
  ) >>"$log" 2>&1 || fail kafka "openssl could not create the certificates" "$log"
  rm -f -- "$t/broker.csr" "$t/broker.ext"
}

# OAUTHBEARER: the broker verifies tokens (RS256 JWTs) with the public keys in jwks.json, as it
# would with an identity provider's; here the issuer is a key pair of the stack's own, and a
# client's token is minted with issuer.key (the secure tests do).
secure_oauth() {
  local o=$KAFKA_OAUTH_DIR log=$KAFKA_DIR/logs/openssl.log
  if [[ ! -s $o/issuer.key || ! -s $o/jwks.json ]]; then
    say kafka "creating a local token issuer for OAUTHBEARER in $o"
    (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$o/issuer.key") >>"$log" 2>&1 ||
      fail kafka "openssl could not create the token issuer's key" "$log"
    node -e '
      const { createPublicKey } = require("node:crypto");
      const { readFileSync } = require("node:fs");
      const jwk = createPublicKey(readFileSync(process.argv[1])).export({ format: "jwk" });
      process.stdout.write(JSON.stringify({ keys: [{ ...jwk, kid: "local-1", use: "sig", alg: "RS256" }] }));
    ' "$o/issuer.key" >"$o/jwks.json" 2>>"$log" || fail kafka "could not write $o/jwks.json (node)" "$log"
  fi
  printf '%s\n' "KAFKA_OAUTH_ISSUER_KEY=$o/issuer.key" "KAFKA_OAUTH_KEY_ID=local-1" \
    "KAFKA_OAUTH_ISSUER=$KAFKA_OAUTH_ISSUER" "KAFKA_OAUTH_AUDIENCE=$KAFKA_OAUTH_AUDIENCE" >"$KAFKA_DIR/env/oauth-issuer.env"
}

secure_passwords() {
  local u f
  for u in "${SECURE_USERS[@]}" controller; do
    f=$KAFKA_CRED_DIR/$u.password
    [[ -s $f ]] && continue
    # The storage holds the SCRAM hashes made from these files at format time.
    if [[ $u != controller && -f $KAFKA_DIR/data/meta.properties ]]; then
      fail kafka "$f is missing but the storage was formatted with it; run 'STACK_KAFKA_SECURITY=sasl_ssl ${0##*/} reset'"
    fi
    (umask 077 && openssl rand -hex 24 >"$f")
  done
}

# One env file per user: what a service or tool of that principal is started with.
secure_client_files() {
  local u
  mkdir -p "$KAFKA_DIR/env"
  for u in "${SECURE_USERS[@]}"; do
    cat >"$KAFKA_DIR/env/$u.env" <<EOT
KAFKA_BROKERS=$HOST:$KAFKA_PORT
KAFKA_SSL=true
KAFKA_SSL_CA=$KAFKA_TLS_DIR/ca.pem
KAFKA_SASL_MECHANISM=SCRAM-SHA-512
KAFKA_SASL_USERNAME=$u
KAFKA_SASL_PASSWORD_FILE=$KAFKA_CRED_DIR/$u.password
EOT
  done
  # The ACLs `npm run setup` creates when run with env/admin.env (docs/security.md). Until the
  # console is a deployable of its own, the gateway runs as `console` and needs ingest's grants too.
  printf 'KAFKA_ACL_PRINCIPALS=ingest=User:ingest,console=User:console,ingest=User:console,processor=User:processor,crm-sink=User:crm-sink\n' \
    >>"$KAFKA_DIR/env/admin.env"
  (
    umask 077
    cat >"$KAFKA_ADMIN_PROPS" <<EOT
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(secure_password admin)";
ssl.truststore.type=PEM
ssl.truststore.location=$KAFKA_TLS_DIR/ca.pem
EOT
  )
}

secure_prepare() {
  mkdir -p "$KAFKA_TLS_DIR" "$KAFKA_CRED_DIR" "$KAFKA_OAUTH_DIR" "$KAFKA_DIR/logs"
  chmod 700 "$KAFKA_TLS_DIR" "$KAFKA_CRED_DIR" "$KAFKA_OAUTH_DIR"
  secure_certs
  secure_passwords
  secure_client_files
  secure_oauth
}

# JVM options of the secure broker: Kafka 4 fetches a JWKS only from URLs listed here.
secure_jvm_args() {
  printf '%s\n' "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://$KAFKA_OAUTH_DIR/jwks.json"
}

# NAME=VALUE arguments of render() for the secure template.
secure_render_args() {
  local u plain
  plain="username=\"admin\" password=\"$(secure_password admin)\""
  for u in "${SECURE_USERS[@]}"; do plain+=" user_$u=\"$(secure_password "$u")\""; done
  printf '%s\n' "KAFKA_TLS_DIR=$KAFKA_TLS_DIR" "ADMIN_PASSWORD=$(secure_password admin)" \
    "CONTROLLER_PASSWORD=$(secure_password controller)" "PLAIN_USERS=$plain" \
    "OAUTH_JWKS_URL=file://$KAFKA_OAUTH_DIR/jwks.json" "OAUTH_ISSUER=$KAFKA_OAUTH_ISSUER" "OAUTH_AUDIENCE=$KAFKA_OAUTH_AUDIENCE"
}

# kafka-storage format arguments: both SCRAM mechanisms for every user.
secure_format_args() {
  local u p
  for u in "${SECURE_USERS[@]}"; do
    p=$(secure_password "$u")
    printf '%s\n' --add-scram "SCRAM-SHA-256=[name=$u,password=$p]" --add-scram "SCRAM-SHA-512=[name=$u,password=$p]"
  done
}
