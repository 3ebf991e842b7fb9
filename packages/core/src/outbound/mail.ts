import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Clock } from '../clock';
import type { MailConfig } from '../config';
import type { Logger } from '../log';

/** Plain text only: short, and no secret but a one-time link. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/**
 * SMTP when SMTP_URL is set. Without it each mail is written as an .eml file under MAIL_DIR and its
 * path logged, so the embedded default's person (or developer) can open it with nothing set up.
 */
export function createMailer(config: MailConfig, log: Logger, clock: Clock): Mailer {
  if (config.smtpUrl) {
    const transport = nodemailer.createTransport(config.smtpUrl, { from: config.from });
    return {
      async send(mail) {
        await transport.sendMail({ ...mail, from: config.from });
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(mail) {
      const built = await transport.sendMail({ ...mail, from: config.from });
      await mkdir(config.dir, { recursive: true, mode: 0o700 });
      const file = path.join(config.dir, `${clock.now().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`);
      await writeFile(file, built.message as Buffer, { mode: 0o600 });
      log.info('mail written (SMTP_URL is unset)', { subject: mail.subject, file });
    },
    close: () => transport.close(),
  };
}
