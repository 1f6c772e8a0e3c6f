import type { HttpRecorder } from './http-recorder';

/** One span as an OTLP/JSON export carried it (ids in hex), with its resource's service.name. */
export interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{ spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: OtlpAttribute[] }> }>;
  }>;
}

/**
 * Every span exported to `collector`, a loopback HTTP server taking OTLP/HTTP with the JSON
 * encoding (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), decoded from the requests it received.
 */
export function otlpSpans(collector: HttpRecorder): ExportedSpan[] {
  return collector.requests
    .filter((request) => request.url === '/v1/traces')
    .flatMap((request) => {
      const body = JSON.parse(request.body) as OtlpExport;
      return (body.resourceSpans ?? []).flatMap((resourceSpans) => {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
        return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
          (scope.spans ?? []).map((span) => ({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
          })),
        );
      });
    });
}

function attributesOf(attributes: OtlpAttribute[] = []): Record<string, string | number | boolean> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => [key, value.stringValue ?? value.boolValue ?? value.doubleValue ?? Number(value.intValue)] as const),
  );
}
