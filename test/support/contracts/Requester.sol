// SPDX-License-Identifier: MIT
pragma solidity 0.8.9;

import "@api3/airnode-protocol/contracts/rrp/requesters/RrpRequesterV0.sol";

/// @title Test requester: makes full and template requests and records what the node delivers.
contract Requester is RrpRequesterV0 {
    mapping(bytes32 => bytes) public fulfilledData;
    mapping(bytes32 => uint256) public fulfillCount;
    bool public shouldRevert;
    /// @dev Extra work done in the callback, so that a low gas limit makes it run out of gas.
    uint256 public burnIterations;
    uint256 private burnSink;

    event RequestMade(bytes32 indexed requestId);
    event Received(bytes32 indexed requestId, bytes data);

    constructor(address rrp) RrpRequesterV0(rrp) {}

    function setShouldRevert(bool value) external {
        shouldRevert = value;
    }

    function setBurnIterations(uint256 value) external {
        burnIterations = value;
    }

    function makeFull(
        address airnode,
        bytes32 endpointId,
        address sponsor,
        address sponsorWallet,
        bytes calldata parameters
    ) external returns (bytes32 requestId) {
        requestId = airnodeRrp.makeFullRequest(
            airnode,
            endpointId,
            sponsor,
            sponsorWallet,
            address(this),
            this.fulfill.selector,
            parameters
        );
        emit RequestMade(requestId);
    }

    function makeTemplate(
        bytes32 templateId,
        address sponsor,
        address sponsorWallet,
        bytes calldata parameters
    ) external returns (bytes32 requestId) {
        requestId = airnodeRrp.makeTemplateRequest(
            templateId,
            sponsor,
            sponsorWallet,
            address(this),
            this.fulfill.selector,
            parameters
        );
        emit RequestMade(requestId);
    }

    function fulfill(bytes32 requestId, bytes calldata data) external onlyAirnodeRrp {
        require(!shouldRevert, "Requester reverted on purpose");
        for (uint256 i = 0; i < burnIterations; i++) {
            burnSink = uint256(keccak256(abi.encodePacked(burnSink, i)));
        }
        fulfilledData[requestId] = data;
        fulfillCount[requestId] += 1;
        emit Received(requestId, data);
    }
}
