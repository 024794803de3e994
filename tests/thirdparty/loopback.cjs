// Preloaded into a third-party Node server: a listen() given only a port binds 127.0.0.1, never every interface.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const portOnly = typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first));
  if (portOnly && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
