"""A seat played through the engine's public gRPC API, the same for a game's bot and for a
person: watching its game (`watching`), signing its moves with the seat's key (`signing`),
and the loop that chooses and submits them (`player`).

Apps import it (`boulevard play`, the examples, the tests), and so does matchmaking's bot
runner, which plays the bot seats of formed matches like any app: that is why it is not in
`boulevard.client`, which no service imports.
"""
