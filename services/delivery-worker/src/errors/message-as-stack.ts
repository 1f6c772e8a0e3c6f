/**
 * Makes an error's stack its message alone, for the failures Herald foresees (the merchant answered
 * 500, refused the connection, the target is switched off). BullMQ keeps each failure's `stack` as
 * the job's stacktrace, which the dashboard shows: there a trace into the processor helps nobody and
 * shows the server's file paths, while the message says what happened.
 */
export function messageAsStack<E extends Error>(error: E): E {
  error.stack = `${error.name}: ${error.message}`;
  return error;
}
