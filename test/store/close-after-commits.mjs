// Child process for the checkpointer test: a host that commits often enough to start the
// background checkpointer, then closes its store and says so. Exits 0 only if closing returned.
import { initHome, openHost } from '../../dist/src/host/identity/home.js';
import { addPrincipal, resolvePrincipal } from '../../dist/src/host/identity/principals.js';
import { sendMessage } from '../../dist/src/host/messages/messages.js';

const [home, sends] = process.argv.slice(2);
const ctx = await openHost({ home, durability: 'normal' });
await initHome(ctx);
await addPrincipal(ctx, { name: 'bot', kind: 'agent' });
const owner = await resolvePrincipal(ctx, 'owner');
for (let i = 0; i < Number(sends); i++) await sendMessage(ctx, owner, { to: 'bot', body: `message ${i}` });
await ctx.store.close();
process.stdout.write('closed\n');
