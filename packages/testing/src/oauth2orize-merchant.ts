import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import oauth2orize from 'oauth2orize';
import { Passport } from 'passport';
import { BasicStrategy } from 'passport-http';
import { Strategy as ClientPasswordStrategy } from 'passport-oauth2-client-password';

/** A merchant's authorization server and receiver built the usual way on oauth2orize, as tests see it. */
export interface OAuth2orizeMerchant {
  /** The token endpoint: the target's Authentication URL. */
  readonly tokenUrl: string;
  /** The callback URL: 200 only to a request with a live bearer token of this server. */
  readonly hookUrl: string;
  /** The bodies of the callbacks it accepted. */
  readonly accepted: string[];
  /** How many token requests it answered, issued or not. */
  tokenRequests(): number;
  /** Forgets every token it issued: the next callback with one is answered 401. */
  revokeTokens(): void;
  close(): Promise<void>;
}

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;
type ErrorMiddleware = (error: unknown, req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * oauth2orize 1.12 with its usual companions, as merchants deploy it: passport-http's Basic
 * strategy and passport-oauth2-client-password (client_secret_post) authenticate the client, and
 * the client credentials exchange issues a token with no expires_in (oauth2orize adds none unless
 * told). passport-http does not form-decode the Basic header (RFC 6749 §2.3.1 asks the server
 * to), so credentials the form request encodes are refused in a Basic header and accepted in the
 * body. Plain node:http (the libraries are Connect middleware), so that packages need no Express.
 */
export async function startOAuth2orizeMerchant(client: { clientId: string; clientSecret: string }): Promise<OAuth2orizeMerchant> {
  const tokens = new Set<string>();
  const accepted: string[] = [];
  let tokenRequests = 0;

  const passport = new Passport();
  const verify = (id: string, secret: string, done: (error: unknown, client?: { id: string } | false) => void) =>
    done(null, id === client.clientId && secret === client.clientSecret ? { id } : false);
  passport.use(new BasicStrategy(verify));
  passport.use(new ClientPasswordStrategy(verify));

  const server = oauth2orize.createServer();
  server.exchange(
    oauth2orize.exchange.clientCredentials((_client, _scope, issued) => {
      const token = randomBytes(16).toString('hex');
      tokens.add(token);
      issued(null, token);
    }),
  );
  const tokenEndpoint: Middleware[] = [
    formBody,
    passport.initialize() as Middleware,
    passport.authenticate(['basic', 'oauth2-client-password'], { session: false }) as Middleware,
    server.token() as Middleware,
  ];
  const errorHandler = server.errorHandler() as ErrorMiddleware;

  const http = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/token') {
      tokenRequests += 1;
      run(tokenEndpoint, req, res, errorHandler);
      return;
    }
    if (req.method === 'POST' && req.url === '/hook') {
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      readBody(req).then((body) => {
        if (token === undefined || !tokens.has(token)) {
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_token"}');
          return;
        }
        accepted.push(body);
        res.writeHead(200).end();
      }, res.destroy.bind(res));
      return;
    }
    res.writeHead(404).end();
  });
  http.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => http.once('listening', () => resolve()));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    tokenUrl: `${origin}/token`,
    hookUrl: `${origin}/hook`,
    accepted,
    tokenRequests: () => tokenRequests,
    revokeTokens: () => tokens.clear(),
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Runs Connect middleware in order, an error going to `onError`. */
function run(steps: Middleware[], req: IncomingMessage, res: ServerResponse, onError: ErrorMiddleware): void {
  let index = 0;
  const next = (error?: unknown) => {
    if (error) return onError(error, req, res, () => res.writeHead(500).end());
    const step = steps[index++];
    if (step) step(req, res, next);
  };
  next();
}

/** The form body as `req.body`, as a body parser sets it. */
const formBody: Middleware = (req, _res, next) => {
  readBody(req).then((body) => {
    (req as IncomingMessage & { body: unknown }).body = Object.fromEntries(new URLSearchParams(body));
    next();
  }, next);
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}
