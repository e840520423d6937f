// portkey-loopback.mjs -- preloaded by bench/run.sh into the Portkey gateway
// (node --import): its start-server.js listens on every interface and has no
// option to choose; the benchmark's peer must stay on 127.0.0.1 like the rest.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, host, ...rest) {
    if (typeof port === "number" && host === undefined)
        return listen.call(this, port, "127.0.0.1", ...rest);
    return listen.call(this, port, host, ...rest);
};
