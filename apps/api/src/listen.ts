import { serve, type ServerType } from '@hono/node-server';
import { StartupError, type Config } from '@toolport/core';

type Fetch = Parameters<typeof serve>[0]['fetch'];

const KEEP_ALIVE_MS = 65_000;

/** A taken port or a missing address is one line naming the setting, like other start-up failures. */
export function listen(fetch: Fetch, config: Config): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => reject(listenFailure(err, config));
    const server = serve({ fetch, port: config.port, hostname: config.host }, () => {
      server.off('error', fail);
      resolve(server);
    });
    // Idle connections outlive a proxy's (60 s on common load balancers) and a busy client's reuse:
    // at Node's 5 s a request sent as the server closed its socket was reset, and a POST is not retried.
    const http = server as unknown as { keepAliveTimeout: number; headersTimeout: number };
    http.keepAliveTimeout = KEEP_ALIVE_MS;
    http.headersTimeout = KEEP_ALIVE_MS + 1_000;
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
