// Contract interfaces of the request-response protocol (AirnodeRrpV0 / NodeRrpV0, its DryRun and the
// ERC721 authorizer), written as human-readable fragments matching the published ABIs (airnode-facts §2).
// Only event/function names and types matter on the wire; argument names follow the upstream ABI.
import { Interface } from 'ethers';

export const rrpInterface = new Interface([
  'event SetSponsorshipStatus(address indexed sponsor, address indexed requester, bool sponsorshipStatus)',
  'event MadeTemplateRequest(address indexed airnode, bytes32 indexed requestId, uint256 requesterRequestCount, uint256 chainId, address requester, bytes32 templateId, address sponsor, address sponsorWallet, address fulfillAddress, bytes4 fulfillFunctionId, bytes parameters)',
  'event MadeFullRequest(address indexed airnode, bytes32 indexed requestId, uint256 requesterRequestCount, uint256 chainId, address requester, bytes32 endpointId, address sponsor, address sponsorWallet, address fulfillAddress, bytes4 fulfillFunctionId, bytes parameters)',
  'event FulfilledRequest(address indexed airnode, bytes32 indexed requestId, bytes data)',
  'event FailedRequest(address indexed airnode, bytes32 indexed requestId, string errorMessage)',
  'event CreatedTemplate(bytes32 indexed templateId, address airnode, bytes32 endpointId, bytes parameters)',
  'event RequestedWithdrawal(address indexed airnode, address indexed sponsor, bytes32 indexed withdrawalRequestId, address sponsorWallet)',
  'event FulfilledWithdrawal(address indexed airnode, address indexed sponsor, bytes32 indexed withdrawalRequestId, address sponsorWallet, uint256 amount)',
  'function setSponsorshipStatus(address requester, bool sponsorshipStatus)',
  'function makeTemplateRequest(bytes32 templateId, address sponsor, address sponsorWallet, address fulfillAddress, bytes4 fulfillFunctionId, bytes parameters) returns (bytes32 requestId)',
  'function makeFullRequest(address airnode, bytes32 endpointId, address sponsor, address sponsorWallet, address fulfillAddress, bytes4 fulfillFunctionId, bytes parameters) returns (bytes32 requestId)',
  'function fulfill(bytes32 requestId, address airnode, address fulfillAddress, bytes4 fulfillFunctionId, bytes data, bytes signature) returns (bool callSuccess, bytes callData)',
  'function fail(bytes32 requestId, address airnode, address fulfillAddress, bytes4 fulfillFunctionId, string errorMessage)',
  'function requestWithdrawal(address airnode, address sponsorWallet)',
  'function fulfillWithdrawal(bytes32 withdrawalRequestId, address airnode, address sponsor) payable',
  'function createTemplate(address airnode, bytes32 endpointId, bytes parameters) returns (bytes32 templateId)',
  'function templates(bytes32 templateId) view returns (address airnode, bytes32 endpointId, bytes parameters)',
  'function getTemplates(bytes32[] templateIds) view returns (address[] airnodes, bytes32[] endpointIds, bytes[] parameters)',
  'function checkAuthorizationStatus(address[] authorizers, address airnode, bytes32 requestId, bytes32 endpointId, address sponsor, address requester) view returns (bool status)',
  'function checkAuthorizationStatuses(address[] authorizers, address airnode, bytes32[] requestIds, bytes32[] endpointIds, address[] sponsors, address[] requesters) view returns (bool[] statuses)',
  'function requestIsAwaitingFulfillment(bytes32 requestId) view returns (bool isAwaitingFulfillment)',
  'function requesterToRequestCountPlusOne(address requester) view returns (uint256)',
  'function sponsorToRequesterToSponsorshipStatus(address sponsor, address requester) view returns (bool)',
  'function sponsorToWithdrawalRequestCount(address sponsor) view returns (uint256)',
]);

export const dryRunInterface = new Interface([
  'event FulfilledRequest(address indexed airnode, bytes32 indexed requestId, bytes data)',
  'function fulfill(bytes32 requestId, address airnode, address fulfillAddress, bytes4 fulfillFunctionId, bytes data, bytes signature) returns (bool callSuccess, bytes callData)',
]);

export const authorizerInterface = new Interface([
  'function isAuthorizedV0(bytes32 requestId, address airnode, bytes32 endpointId, address sponsor, address requester) view returns (bool)',
]);

export const erc721AuthorizerInterface = new Interface([
  'function isAuthorized(address airnode, uint256 chainId, address requester, address token) view returns (bool)',
  'function multicall(bytes[] data) returns (bytes[] returndata)',
]);

export const topics = {
  MadeTemplateRequest: rrpInterface.getEvent('MadeTemplateRequest')!.topicHash,
  MadeFullRequest: rrpInterface.getEvent('MadeFullRequest')!.topicHash,
  FulfilledRequest: rrpInterface.getEvent('FulfilledRequest')!.topicHash,
  FailedRequest: rrpInterface.getEvent('FailedRequest')!.topicHash,
  RequestedWithdrawal: rrpInterface.getEvent('RequestedWithdrawal')!.topicHash,
  FulfilledWithdrawal: rrpInterface.getEvent('FulfilledWithdrawal')!.topicHash,
} as const;
