// SPDX-License-Identifier: MIT
pragma solidity 0.8.9;

/// Runs at a sponsor wallet's address (eth_call state override, nothing deployed): calls the RRP contract with
/// each request's fulfil calldata and gas, in order, as the wallet's transactions would, and returns each call's
/// success and return (or revert) data. Reverts when it cannot give a call its whole gas (a provider that caps
/// eth_call gas below what was asked): an outcome under less gas would not be the transaction's.
contract FulfillmentSimulator {
    function simulate(address rrp, uint256[] calldata gas, bytes[] calldata data)
        external
        returns (bool[] memory ok, bytes[] memory results)
    {
        ok = new bool[](data.length);
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; i++) {
            require(gasleft() > gas[i] + gas[i] / 63 + 10000, "Simulation gas too low");
            (ok[i], results[i]) = rrp.call{gas: gas[i]}(data[i]);
        }
    }
}
