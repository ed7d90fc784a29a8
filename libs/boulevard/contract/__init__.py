"""The contract between Boulevard's services and everyone who talks to them, beside the
generated code of its protos (`boulevard.api`): the proto ⇄ domain mapping (`mapping`), the
dice wire's kinds (`dice`), the dice outcome log's encodings and checks (`dice_log`), the
ledger's heads and money trail (`ledger`), and time controls and seat clocks (`clocks`).

Pure: no I/O, clock or global randomness. The servers, the SDK (`boulevard.client`,
`boulevard.seats`) and the audits depend on it; it depends on none of them
(tests/unit/test_layers.py). It holds no key: whoever holds one signs (the dice service
its heads, a seat its moves).
"""
