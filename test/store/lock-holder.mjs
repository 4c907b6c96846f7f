// Another process holding SQLite's write lock, for test/store/write-lock.test.ts. Driven by IPC
// messages only (no timers): `lock` takes the lock with BEGIN IMMEDIATE and answers `locked`;
// `release` writes one meta row and commits, then answers `released`; `exit` closes and exits.
import Database from 'better-sqlite3';

const db = new Database(process.argv[2]);
db.pragma('busy_timeout = 10000');
process.on('message', (message) => {
  if (message.type === 'lock') {
    db.exec('begin immediate');
    process.send({ type: 'locked' });
  } else if (message.type === 'release') {
    db.prepare('insert into meta (key, value) values (?, ?)').run(message.key, 'from the other process');
    db.exec('commit');
    process.send({ type: 'released' });
  } else if (message.type === 'exit') {
    db.close();
    process.exit(0);
  }
});
process.send({ type: 'ready' });
