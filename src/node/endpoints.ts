// A request's endpoint in the config's OIS, read by the coordinator's planner (the confirmation filter) and by
// the worker (the API call, `_gasPrice`): one reading for both, through the node's door to the OIS engine.
import type { Config } from '../config/index.js';
import { type Ois, reservedParameterValue } from './ois-adapter.js';

type EndpointCall = { oisTitle: string; endpointName: string; parameters: Record<string, unknown> };

export function findEndpoint(config: Config, call: EndpointCall) {
  const ois = config.ois.find((o) => o.title === call.oisTitle) as Ois | undefined;
  const endpoint = ois?.endpoints.find((e) => e.name === call.endpointName);
  return { ois, endpoint };
}

/** The reserved `_minConfirmations` of a request, honoured only when the endpoint lists it. */
export function requestedMinConfirmations(config: Config, call: EndpointCall): string | undefined {
  const { endpoint } = findEndpoint(config, call);
  return endpoint ? reservedParameterValue('_minConfirmations', endpoint, call.parameters) : undefined;
}
