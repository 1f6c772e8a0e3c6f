// The events-api's public entry point, for what drives it from outside its own folder (the fault
// suite, the bench, packages/testing's in-process harness): the process itself starts from server.ts.
export { createApp, type AppDependencies } from './app';
export { closeApiDatabases, createApiDatabases, type ApiDatabases } from './databases';
export { createHttpServer } from './http/http-server';
// The bench's bare-Express ceilings serve requests made with the same prototypes as the API.
export { withAppPrototypes } from './http/app-prototypes';
