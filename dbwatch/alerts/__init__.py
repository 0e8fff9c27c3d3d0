"""Alerts: payload builders (payloads), what to send when (router), and HTTP delivery (delivery).

Messages wait in the state DB's outbox until a receiver accepts them, across restarts.
"""
