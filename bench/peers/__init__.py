"""Peers: the systems a user would pick instead of deltalog, behind one interface.

Each adapter loads facts, keeps one query's result through ticks of adds and retracts and
returns each tick's change count (`base.Peer`). `registry.make_peer` builds them by name;
`suite` runs them side by side and checks every count against deltalog's; `report` turns the
JSON into tables and charts. `python -m bench peers --help` is the command.
"""
