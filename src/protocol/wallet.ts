// Key derivations of the node (airnode-facts §1): node address m/44'/60'/0'/0/0, the xpub at m/44'/60'/0',
// and sponsor wallets m/44'/60'/0'/<protocolId>/<six 31-bit chunks of the sponsor address>.
import { getAddress, HDNodeWallet, Mnemonic, Wallet } from 'ethers';

export const PROTOCOL_IDS = {
  RRP: '1',
  PSP: '2',
  RELAYED_RRP: '3',
  RELAYED_PSP: '4',
  AIRSEEKER: '5',
  AIRKEEPER: '12345',
} as const;

const NODE_ACCOUNT_PATH = "m/44'/60'/0'";

export function isValidMnemonic(mnemonic: string): boolean {
  return Mnemonic.isValidMnemonic(mnemonic);
}

/** The node's signing wallet (m/44'/60'/0'/0/0); its address is the node address. */
export function nodeWallet(mnemonic: string): HDNodeWallet {
  return HDNodeWallet.fromPhrase(mnemonic, undefined, `${NODE_ACCOUNT_PATH}/0/0`);
}

const PRIVATE_KEY_PATTERN = /^(0x)?[0-9a-fA-F]{64}$/;

/**
 * The wallet of a private key (64 hex digits, 0x optional; surrounding whitespace, such as a file's final newline,
 * ignored), or undefined when the text is not one: the caller names the source, never the text.
 */
export function walletFromPrivateKey(text: string): Wallet | undefined {
  const key = text.trim();
  if (!PRIVATE_KEY_PATTERN.test(key)) return undefined;
  try {
    return new Wallet(key.startsWith('0x') ? key : `0x${key}`);
  } catch {
    // Zero, or not below the curve order.
    return undefined;
  }
}

export function deriveNodeAddress(mnemonic: string): string {
  return nodeWallet(mnemonic).address;
}

export function deriveXpub(mnemonic: string): string {
  return HDNodeWallet.fromPhrase(mnemonic, undefined, NODE_ACCOUNT_PATH).neuter().extendedKey;
}

/** Path below m/44'/60'/0' for a sponsor: protocolId, then the address as six 31-bit chunks, least significant first. */
export function deriveWalletPathFromSponsorAddress(
  sponsorAddress: string,
  protocolId: string = PROTOCOL_IDS.RRP,
): string {
  const sponsor = BigInt(getAddress(sponsorAddress));
  const chunks: string[] = [];
  for (let i = 0n; i < 6n; i++) chunks.push(((sponsor >> (31n * i)) & 0x7fffffffn).toString());
  return `${protocolId}/${chunks.join('/')}`;
}

export function deriveSponsorWallet(mnemonic: string, sponsorAddress: string, protocolId: string = PROTOCOL_IDS.RRP) {
  const path = `${NODE_ACCOUNT_PATH}/${deriveWalletPathFromSponsorAddress(sponsorAddress, protocolId)}`;
  return HDNodeWallet.fromPhrase(mnemonic, undefined, path);
}

/** The sponsor wallet address from the public xpub alone, as a third party (or a requester) computes it. */
export function deriveSponsorWalletAddressFromXpub(
  xpub: string,
  sponsorAddress: string,
  protocolId: string = PROTOCOL_IDS.RRP,
): string {
  return HDNodeWallet.fromExtendedKey(xpub).derivePath(deriveWalletPathFromSponsorAddress(sponsorAddress, protocolId))
    .address;
}
