// boardgame.io's own server (Koa + socket.io) serving Las Vegas, for bench/bgio.py.
// Usage: node server.js PORT memory|file [DIR]
//   memory: boardgame.io's default InMemory storage (nothing survives the process);
//   file:   its FlatFile storage (node-persist, one JSON file per key under DIR): every
//           state and log is written, and the write awaited, before the update goes out;
//           nothing is fsynced (node-persist calls fs.writeFile).
'use strict';

const { Server, FlatFile } = require('boardgame.io/server');
const { LasVegas } = require('./las_vegas');

// node-persist 3 queues writes by default and flushes the queue once a second, so an
// awaited setItem waits up to a second (and one game makes ~2 moves/s). Each write is
// written at once here, as the storage's contract ("awaited") reads.
class AwaitedFlatFile extends FlatFile {
  async connect() {
    await this.games.init({ dir: this.dir, logging: false, ttl: false, writeQueue: false });
  }
}

const [port, storage, dir] = process.argv.slice(2);
if (!['memory', 'file'].includes(storage)) throw new Error('storage: memory or file');
const db = storage === 'file' ? new AwaitedFlatFile({ dir }) : undefined;
const server = Server({ games: [LasVegas], db, origins: ['http://127.0.0.1'] });
server.run({ port: Number(port), callback: () => console.log('ready') });
