/** Body of POST /deliveries/recover: the window of the merchant's recovery, on its events' createdAt. */
export const recoverBodySchema = {
  $id: 'herald:api/recover-deliveries',
  type: 'object',
  additionalProperties: false,
  required: ['from'],
  properties: {
    from: {
      type: 'string',
      format: 'date-time',
      description: 'Recover the events created at or after this time (RFC 3339), at most RECOVERY_MAX_DAYS (default 7) days ago.',
    },
    to: {
      type: 'string',
      format: 'date-time',
      description: 'Recover the events created before this time (RFC 3339), after `from`. Default: now.',
    },
  },
} as const;

export interface RecoverBody {
  from: string;
  to?: string;
}
