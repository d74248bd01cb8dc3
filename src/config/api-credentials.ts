// The apiCredentials entry, shared by the node's config and the Airnode feed's (src/feed/config.ts), in a module of
// its own so that the feed loads it without the node's whole config model.
import { z } from 'zod';

/** How a description tells users to give a secret (written so that no tool reads it as a template). */
export const SECRET_REF = '$' + '{NAME}';

export const apiCredentialsSchema = z
  .strictObject({
    oisTitle: z.string().describe('Title of the OIS containing the scheme'),
    securitySchemeName: z.string().describe("Name of a scheme in that OIS's components.securitySchemes"),
    securitySchemeValue: z.string().describe('The credential, normally given as ' + SECRET_REF + ' from secrets.env'),
  })
  .describe('A credential for a security scheme');
