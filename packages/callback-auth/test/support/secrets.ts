import { inspect } from 'node:util';

/** The error thrown by `action`, or a failure if it returns normally. */
export async function errorFrom(action: () => unknown): Promise<Error> {
  try {
    await action();
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`a non-Error was thrown: ${String(error)}`);
  }
  throw new Error('expected an error, but none was thrown');
}

/** The ways a username and password can leak: each alone, joined, and as a Basic credential. */
export function credentialForms(username: string, password: string): string[] {
  const joined = `${username}:${password}`;
  return [password, joined, Buffer.from(joined).toString('base64')];
}

/** Asserts that none of `secrets` shows in the error's message, stack, properties or JSON form. */
export function expectNoSecrets(error: Error, secrets: string[]): void {
  const views = [error.message, error.stack ?? '', inspect(error, { depth: 5 }), JSON.stringify(error)];
  for (const secret of secrets) {
    for (const view of views) expect(view).not.toContain(secret);
  }
}
