#!/bin/sh
# docker-compose.yml's `kafka` command: renders compose-server.properties.template with the
# principals' passwords (KAFKA_PASSWORD_<USER> in the container's environment), formats the
# storage on the first start, then runs the broker. Passwords are letters and digits only: they
# go into JAAS strings as they are.
set -eu
template=/etc/kafka/compose/compose-server.properties.template
config=/tmp/kafka/server.properties
users="admin ingest console processor crm-sink"
fail() { echo "kafka: $*" >&2; exit 1; }

mkdir -p /tmp/kafka
chmod 700 /tmp/kafka
plain_users=""
for user in $users; do
  var=KAFKA_PASSWORD_$(echo "$user" | tr 'a-z-' 'A-Z_')
  eval "password=\${$var:-}"
  [ -n "$password" ] || fail "$var is not set"
  case $password in *[!A-Za-z0-9]*) fail "$var: letters and digits only (it goes into a JAAS string)" ;; esac
  [ ${#password} -ge 16 ] || fail "$var: at least 16 characters"
  plain_users="$plain_users user_$user=\"$password\""
  [ "$user" = admin ] && admin_password=$password
done
# The controller principal is used inside this container only: a new password on every start.
controller_password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')

umask 077
sed -e "s|@CONTROLLER_PASSWORD@|$controller_password|g" \
  -e "s|@ADMIN_PASSWORD@|$admin_password|g" \
  -e "s|@PLAIN_USERS@|${plain_users# }|g" "$template" >"$config"
# The healthcheck's client settings (admin, over the compose network's listener).
cat >/tmp/kafka/admin.properties <<EOT
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
ssl.truststore.type=PEM
ssl.truststore.location=/etc/kafka/tls/ca.pem
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="$admin_password";
EOT

/opt/kafka/bin/kafka-storage.sh format --ignore-formatted -t "$(/opt/kafka/bin/kafka-storage.sh random-uuid)" -c "$config"
exec /opt/kafka/bin/kafka-server-start.sh "$config"
