// Checks OpenAPI documents with the tools merchants use, each in its own process since
// @redocly/openapi-core is an ES module Jest cannot load: swagger-parser's validate and Redocly's
// linter with its recommended rules. Usage: node check-openapi.mjs FILE...; prints one JSON line
// per file: { file, swaggerParser: null | message, redocly: [{ severity, ruleId, message, location }] }.
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lint } from '@redocly/openapi-core';

const config = await createConfig({ extends: ['recommended'] });
for (const file of process.argv.slice(2)) {
  let swaggerParser = null;
  try {
    await SwaggerParser.validate(file);
  } catch (error) {
    swaggerParser = String(error?.message);
  }
  const problems = await lint({ ref: file, config });
  const redocly = problems.map((p) => ({ severity: p.severity, ruleId: p.ruleId, message: p.message, location: p.location?.[0]?.pointer }));
  console.log(JSON.stringify({ file, swaggerParser, redocly }));
}
