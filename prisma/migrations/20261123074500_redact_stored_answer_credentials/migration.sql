-- Credentials a merchant echoed back, redacted in the answers stored before the worker redacted
-- them itself: the same rules as the logs (Basic and Bearer values, URL user info, JSON string
-- members whose name says secret), written in PostgreSQL's regular expressions. The target's own
-- passwords cannot be searched for here (they are stored encrypted); those rules cover the
-- Authorization header an echo shows. Only rows that change are written; running it again changes nothing.
UPDATE "delivery_attempts" AS a
SET "response_body" = r.redacted
FROM (
  SELECT "id",
    regexp_replace(
      regexp_replace(
        regexp_replace("response_body", '\y(Basic|Bearer)\s+[A-Za-z0-9._~+/=-]+', '\1 [REDACTED]', 'g'),
        '(//[^/\s:@]+:)[^@\s/]+@', '\1[REDACTED]@', 'g'),
      '("(?:[^"\\]|\\.)*(?:pass|secret|token|authorization|api[-_]?key|cookie|credential)(?:[^"\\]|\\.)*"\s*:\s*)"(?!(?:Basic|Bearer) \[REDACTED\]")(?:[^"\\]|\\.)*"',
      '\1"[REDACTED]"', 'gi') AS redacted
  FROM "delivery_attempts"
  WHERE "response_body" IS NOT NULL
) AS r
WHERE a."id" = r."id" AND r.redacted <> a."response_body";
