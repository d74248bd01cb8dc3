import { expect } from 'chai';
import { getBytes, keccak256, verifyMessage, Wallet } from 'ethers';
import { cachingSigner } from '../../../src/gateway/signature-cache.js';
import type { NodeSigner } from '../../../src/gateway/signing.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';

const wallet = nodeWallet('test test test test test test test test test test test junk');

/** The real wallet, counting how often it actually signs. */
function countingWallet(): NodeSigner & { signings: number } {
  const counted = {
    signings: 0,
    address: wallet.address,
    signMessageSync(message: string | Uint8Array) {
      counted.signings++;
      return wallet.signMessageSync(message);
    },
  };
  return counted;
}

describe('gateway signature cache', () => {
  it('answers the wallet’s own signature, byte for byte, signing each message once', () => {
    const inner = countingWallet();
    const signer = cachingSigner(inner);
    const message = getBytes(keccak256('0x1234'));
    const first = signer.signMessageSync(message);
    const again = signer.signMessageSync(getBytes(keccak256('0x1234')));
    expect(first).to.equal(wallet.signMessageSync(message));
    expect(again).to.equal(first);
    expect(verifyMessage(message, first)).to.equal(wallet.address);
    expect(signer.address).to.equal(wallet.address);
    expect(inner.signings).to.equal(1);
    expect(signer.signMessageSync(getBytes(keccak256('0x5678')))).to.equal(
      wallet.signMessageSync(getBytes(keccak256('0x5678'))),
    );
    expect(inner.signings).to.equal(2);
  });

  it('keeps at most its capacity, dropping the oldest, and signs text or long messages every time', () => {
    const inner = countingWallet();
    const signer = cachingSigner(inner, 2);
    const messages = ['0x01', '0x02', '0x03'].map((seed) => getBytes(keccak256(seed)));
    for (const message of messages) signer.signMessageSync(message);
    signer.signMessageSync(messages[2]!);
    expect(inner.signings).to.equal(3);
    signer.signMessageSync(messages[0]!);
    expect(inner.signings).to.equal(4);
    signer.signMessageSync('hello');
    signer.signMessageSync('hello');
    signer.signMessageSync(new Uint8Array(65));
    signer.signMessageSync(new Uint8Array(65));
    expect(inner.signings).to.equal(8);
  });

  it('signs for an ethers wallet with libsecp256k1: the wallet’s bytes, without calling the wallet', () => {
    const key = `0x${'5a'.repeat(32)}`;
    const reference = new Wallet(key);
    const held = new Wallet(key);
    let walletSignings = 0;
    const walletSign = held.signMessageSync.bind(held);
    held.signMessageSync = (message: string | Uint8Array) => {
      walletSignings++;
      return walletSign(message);
    };
    const signer = cachingSigner(held);
    for (let i = 0; i < 50; i++) {
      const message = getBytes(keccak256(Buffer.from(`m${i}`)));
      expect(signer.signMessageSync(message)).to.equal(reference.signMessageSync(message));
    }
    expect(signer.signMessageSync('text')).to.equal(reference.signMessageSync('text'));
    expect(signer.address).to.equal(reference.address);
    expect(walletSignings).to.equal(0);
  });
});
