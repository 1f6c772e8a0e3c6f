/**
 * One callback to a notification target, as both services send it: the delivery worker for queued
 * events, the events-api for test callbacks. Its headers are built in one place (callbackHeaders).
 */
export { createCallbackSender, type CallbackRequest, type CallbackResponse, type CallbackSenderOptions, type SendCallback } from './send-callback';
export { callbackFailure, type AttemptErrorKind, type CallbackResult } from './send-callback';
export { sendCallback, type CallbackChannel, type CallbackMessage } from './send-callback';
export { TEST_CALLBACK_HEADER, testCallbackBodySchema, testCallbackMessage } from './test-callback';
