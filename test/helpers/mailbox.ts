import { SMTPServer } from 'smtp-server';
import { mailboxes, parse, type ReceivedMail } from './mail-files';

export { linkIn, type ReceivedMail } from './mail-files';

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives, as a deployment's mail relay would
 * take it (no TLS or AUTH on loopback). `SMTP_URL` points Toolport at it.
 */
export async function startMailbox() {
  const mails: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push(parse(Buffer.concat(chunks).toString('utf8'), session.envelope.rcptTo.map((r) => r.address.toLowerCase())));
        for (const w of waiters) w();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const received = () => mails;
  mailboxes.add(received);
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    /** The first mail to `to` after the first `skip` ones, as it arrives (up to 20 s). */
    async next(to: string, subject: RegExp, skip = 0): Promise<ReceivedMail> {
      const find = () => mails.filter((m) => m.to.includes(to.toLowerCase()) && subject.test(m.subject))[skip];
      const deadline = Date.now() + 20_000;
      for (;;) {
        const found = find();
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no mail to ${to} matching ${subject} (${mails.length} received: ${mails.map((m) => `${m.to.join(',')}: ${m.subject}`).join('; ')})`);
        await new Promise<void>((resolve) => {
          const done = () => {
            waiters.delete(done);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(done, 500);
          waiters.add(done);
        });
      }
    },
    close: () => {
      mailboxes.delete(received);
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
