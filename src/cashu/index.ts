// Cashu wire types and helpers, one module per NUT as cashu-ts splits them, shared by the dev mint
// (src/devmint) and the proxy node's mint client and token reader (src/proxy).
export * from './nut00.js';
export * from './nut01.js';
export * from './nut02.js';
export * from './nut03.js';
export * from './nut04.js';
export * from './nut05.js';
export * from './nut07.js';
export * from './nut09.js';
export * from './nut12.js';
export * from './bolt11.js';
