// boardgame.io's own server (Koa + socket.io) serving Las Vegas, for bench/bgio.py.
// Usage: node server.js PORT memory|file [DIR]
//   memory: boardgame.io's default InMemory storage (nothing survives the process);
//   file:   its FlatFile storage (node-persist, one JSON file per key under DIR): every
//           state and log is written, and the write awaited, before the update goes out;
//           nothing is fsynced (node-persist calls fs.writeFile).
'use strict';

const { Server, FlatFile } = require('boardgame.io/server');
const { LasVegas } = require('./las_vegas');

// Two node-persist 3 defaults are turned off here, both in boardgame.io's favour:
// - its write queue, flushed once a second, so an awaited setItem waits up to a second (one
//   game makes ~2 moves/s); each write is written at once here, as "awaited" reads;
// - its expiry sweep, which every 2 minutes reads every file to find expired keys (there are
//   none: FlatFile sets no ttl) and, racing a write of one (fs.writeFile is not atomic),
//   rejects unhandled and kills the server (seen at 100 tables).
class AwaitedFlatFile extends FlatFile {
  async connect() {
    await this.games.init({
      dir: this.dir,
      logging: false,
      ttl: false,
      writeQueue: false,
      expiredInterval: 0,
    });
  }
}

const [port, storage, dir] = process.argv.slice(2);
if (!['memory', 'file'].includes(storage)) throw new Error('storage: memory or file');
const db = storage === 'file' ? new AwaitedFlatFile({ dir }) : undefined;
const server = Server({ games: [LasVegas], db, origins: ['http://127.0.0.1'] });
server.run({ port: Number(port), callback: () => console.log('ready') });
