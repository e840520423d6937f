# toolgate container: build stage with the -dev packages, run stage with the
# runtime libraries only. The build goes through `make install`, which the
# test suite runs and checks, so what this file does is tested.
FROM debian:12-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential pkg-config libmicrohttpd-dev libcurl4-openssl-dev \
        libjansson-dev libinih-dev libhiredis-dev libssl-dev libstemmer-dev libpoppler-glib-dev ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make -j"$(nproc)" && make install DESTDIR=/out PREFIX=/usr

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
        libmicrohttpd12 libcurl4 libjansson4 libinih1 libhiredis0.14 libssl3 libstemmer0d libpoppler-glib8 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /nonexistent --shell /usr/sbin/nologin toolgate
COPY --from=build /out/ /
USER toolgate
EXPOSE 8080
# In a container toolgate must listen beyond loopback; the conf can override.
ENTRYPOINT ["/usr/bin/toolgate", "serve", "-c", "/etc/toolgate/toolgate.conf"]
CMD ["--listen", "0.0.0.0:8080"]
HEALTHCHECK --interval=10s --timeout=2s --retries=3 CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
