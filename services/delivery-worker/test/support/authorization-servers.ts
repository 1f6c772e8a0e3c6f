import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import OAuth2Server, { Request as OAuthRequest, Response as OAuthResponse, type Client, type Token } from '@node-oauth/oauth2-server';
import express from 'express';
import { testProcessEnv } from '@herald/testing';

/** One confidential OAuth client of a merchant's authorization server. */
export interface OAuthClient {
  clientId: string;
  clientSecret: string;
  /** Space-separated scopes the client may ask for. */
  scope: string;
}

/** An authorization server on 127.0.0.1, with the merchant's receiver when it serves one. */
export interface AuthorizationServer {
  /** The token endpoint: the target's Authentication URL. */
  readonly tokenUrl: string;
  /** Whether `token` is a live access token this server issued. */
  isActive(token: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * oidc-provider 9 as the merchant's authorization server, in a child process (it is an ES module;
 * see oidc-provider-server.mjs). Tokens are checked by its introspection endpoint, as a resource
 * server would.
 */
export async function startOidcProvider(client: OAuthClient): Promise<AuthorizationServer> {
  const child = spawn(process.execPath, [path.join(__dirname, 'oidc-provider-server.mjs'), JSON.stringify(client)], {
    env: testProcessEnv({}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const origin = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const line = /^(\{.*\})\n/m.exec(output);
      if (line) resolve(`http://127.0.0.1:${(JSON.parse(line[1]!) as { port: number }).port}`);
    });
    child.once('exit', (code) => reject(new Error(`oidc-provider exited with ${code} before listening: ${output}`)));
  });
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`;
  return {
    tokenUrl: `${origin}/token`,
    async isActive(token) {
      const response = await fetch(`${origin}/token/introspection`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }),
      });
      return ((await response.json()) as { active?: boolean }).active === true;
    },
    close: () => stopChild(child),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** What the merchant's receiver behind @node-oauth/oauth2-server saw. */
export interface OAuth2ServerMerchant extends AuthorizationServer {
  /** The callback URL: answers 200 only to a request with a live bearer token of this server. */
  readonly hookUrl: string;
  /** The bodies of the callbacks it accepted. */
  readonly accepted: string[];
}

/**
 * A merchant's Express app on @node-oauth/oauth2-server 5: POST /token issues tokens by the client
 * credentials grant, POST /hook authenticates the bearer token before taking the callback. The
 * model (merchant code in every deployment of this library) keeps tokens in memory.
 *
 * The library takes the Basic credentials as they arrive, without the form-decoding RFC 6749
 * §2.3.1 asks of the server (its basic-auth dependency does not do it). With `decodesBasicForm`
 * (the default) the model decodes them, as a careful merchant's does; without it, as most models
 * are written, credentials the form request encodes are refused in the Basic header, and read
 * right only in the body (client_secret_post).
 */
export async function startOAuth2ServerMerchant(client: OAuthClient, { decodesBasicForm = true } = {}): Promise<OAuth2ServerMerchant> {
  const tokens = new Map<string, Token>();
  const registered: Client = { id: client.clientId, grants: ['client_credentials'] };
  const formDecode = decodesBasicForm ? (value: string) => decodeURIComponent(value.replace(/\+/g, ' ')) : (value: string) => value;
  const oauth = new OAuth2Server({
    model: {
      async getClient(clientId: string, clientSecret: string | null) {
        const matches = formDecode(clientId) === client.clientId && clientSecret !== null && formDecode(clientSecret) === client.clientSecret;
        return matches ? registered : false;
      },
      async getUserFromClient() {
        return { id: `client:${client.clientId}` };
      },
      async validateScope(_user: unknown, _client: Client, scope?: string[]) {
        const allowed = client.scope.split(' ');
        return (scope ?? []).every((s) => allowed.includes(s)) ? (scope ?? []) : false;
      },
      async saveToken(token: Token, savedClient: Client, user: unknown) {
        const saved = { ...token, client: savedClient, user: user as Token['user'] };
        tokens.set(token.accessToken, saved);
        return saved;
      },
      async getAccessToken(accessToken: string) {
        return tokens.get(accessToken) ?? false;
      },
    },
  });

  const accepted: string[] = [];
  const app = express();
  app.use(express.urlencoded({ extended: false }));
  app.post('/token', async (req, res) => {
    const response = new OAuthResponse(res);
    try {
      await oauth.token(new OAuthRequest(req), response, { requireClientAuthentication: { client_credentials: true } });
      res
        .status(response.status ?? 200)
        .set(response.headers ?? {})
        .json(response.body);
    } catch (error) {
      // As @node-oauth/express answers: the library's OAuthError as an RFC 6749 §5.2 error body.
      const { code = 500, name = 'server_error', message = '' } = error as { code?: number; name?: string; message?: string };
      res.status(code).json({ error: name, error_description: message });
    }
  });
  app.post('/hook', express.text({ type: 'application/json' }), async (req, res) => {
    try {
      await oauth.authenticate(new OAuthRequest(req), new OAuthResponse(res));
    } catch {
      res.status(401).json({ error: 'invalid_token' });
      return;
    }
    accepted.push(req.body as string);
    res.status(200).end();
  });

  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    tokenUrl: `${origin}/token`,
    hookUrl: `${origin}/hook`,
    accepted,
    async isActive(token) {
      const saved = tokens.get(token);
      return saved !== undefined && saved.accessTokenExpiresAt !== undefined && saved.accessTokenExpiresAt > new Date();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
