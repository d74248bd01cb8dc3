// Minimal structural view of the OIS objects the engine reads. Field names follow the spec
// (oracle-node-config.md, "OIS object") exactly, and every field is as wide as or wider than the
// zod model in src/config, so values typed by the config model can be passed in unchanged (checked at
// compile time at the end of this file). The engine keeps this wider view in its interface (rather than
// the config model's own types) because callers also hand it OIS objects built outside the config parser.
import type {
  ApiCredentials as ConfigApiCredential,
  Endpoint as ConfigEndpoint,
  Ois as ConfigOis,
} from '../config/index.js';

export type OperationParameter = { name: string; in: string };

export type FixedOperationParameter = { operationParameter: OperationParameter; value?: unknown };

export type ReservedParameter = { name: string; fixed?: string | undefined; default?: string | undefined };

export type EndpointParameter = {
  name: string;
  operationParameter?: OperationParameter | undefined;
  default?: string | undefined;
  required?: boolean | undefined;
};

export type ProcessingSpecification = { environment: string; value: string; timeoutMs: number };

export type ProcessingSpecificationV2 = { environment: string; value: string; timeoutMs: number };

export type Endpoint = {
  name: string;
  operation?: { path: string; method: string } | undefined;
  fixedOperationParameters: readonly FixedOperationParameter[];
  reservedParameters: readonly ReservedParameter[];
  parameters: readonly EndpointParameter[];
  preProcessingSpecifications?: readonly ProcessingSpecification[] | undefined;
  postProcessingSpecifications?: readonly ProcessingSpecification[] | undefined;
  preProcessingSpecificationV2?: ProcessingSpecificationV2 | undefined;
  postProcessingSpecificationV2?: ProcessingSpecificationV2 | undefined;
};

export type SecurityScheme = { type: string; name?: string | undefined; in?: string | undefined; scheme?: string };

export type Operation = { parameters: readonly OperationParameter[] };

export type Ois = {
  title: string;
  apiSpecifications: {
    servers: readonly { url: string }[];
    paths: Record<string, Partial<Record<string, Operation | undefined>>>;
    components: { securitySchemes: Record<string, SecurityScheme> };
    security: Record<string, unknown>;
  };
  endpoints: readonly Endpoint[];
};

export type ApiCredential = { oisTitle: string; securitySchemeName: string; securitySchemeValue: string };

export const RESERVED_PARAMETER_NAMES: readonly string[] = [
  '_type',
  '_path',
  '_times',
  '_gasPrice',
  '_minConfirmations',
];

export function isReservedParameterName(name: string): boolean {
  return RESERVED_PARAMETER_NAMES.includes(name);
}

// Compile-time guarantee that the config model's values are accepted by the engine.
type Assert<T extends true> = T;
export type ConfigOisIsAccepted = Assert<ConfigOis extends Ois ? true : false>;
export type ConfigEndpointIsAccepted = Assert<ConfigEndpoint extends Endpoint ? true : false>;
export type ConfigCredentialIsAccepted = Assert<ConfigApiCredential extends ApiCredential ? true : false>;
