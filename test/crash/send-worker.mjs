// Child process for the crash test: sends messages forever, printing each id only after the
// send has returned (committed). The parent kills it with SIGKILL at a random moment.
import { openHost } from '../../dist/src/host/identity/home.js';
import { resolvePrincipal } from '../../dist/src/host/identity/principals.js';
import { sendMessage } from '../../dist/src/host/messages/messages.js';

const [home, durability] = process.argv.slice(2);
const ctx = await openHost({ home, durability });
const owner = await resolvePrincipal(ctx, 'owner');
process.stdout.write('ready\n');
for (let i = 0; ; i++) {
  const sent = await sendMessage(ctx, owner, {
    to: 'bot',
    body: `crash message ${i} ${'😀'.repeat(i % 50)}`,
  });
  process.stdout.write(`${sent.message_id}\n`);
}
