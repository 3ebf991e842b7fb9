import { serve, type ServerType } from '@hono/node-server';
import { StartupError, type Config } from '@toolport/core';

type Fetch = Parameters<typeof serve>[0]['fetch'];

/** A taken port or a missing address is one line naming the setting, like other start-up failures. */
export function listen(fetch: Fetch, config: Config): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => reject(listenFailure(err, config));
    const server = serve({ fetch, port: config.port, hostname: config.host }, () => {
      server.off('error', fail);
      resolve(server);
    });
    server.once('error', fail);
  });
}

function listenFailure(err: NodeJS.ErrnoException, { host, port }: Config): Error {
  if (err.code === 'EADDRINUSE') return new StartupError(`port ${port} on ${host} is already in use (PORT); stop what listens there or set another PORT.`);
  if (err.code === 'EACCES') return new StartupError(`port ${port} needs privileges this process does not have (PORT); set a PORT above 1023.`);
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') {
    return new StartupError(`${host} is not an address of this machine (HOST); set HOST to one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for every interface.`);
  }
  return err;
}
