# docker-compose.yml's `kafka-tls` one-shot: openssl and deploy/kafka/compose-tls.sh, nothing else.
FROM alpine:3.22
RUN apk add --no-cache openssl
COPY deploy/kafka/compose-tls.sh /usr/local/bin/compose-tls.sh
ENTRYPOINT ["sh", "/usr/local/bin/compose-tls.sh"]
