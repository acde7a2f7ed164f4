// Defence in depth against prototype pollution, the same as `node --disable-proto=delete` (which
// `npm start` and the test workers pass): without the Object.prototype.__proto__ accessor,
// `object['__proto__'] = value` makes a plain own property instead of replacing the prototype.
// Imported first by the CLI, so every other way of starting quartet has it too: bin/quartet.js
// (a shebang takes no flag), dist/cli.js, the WORKERS processes.
// eslint-disable-next-line no-proto -- removing the accessor is the point
delete (Object.prototype as { __proto__?: unknown }).__proto__;
