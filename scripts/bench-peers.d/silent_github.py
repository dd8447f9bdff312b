"""A GitHub that accepts connections on 127.0.0.1:PORT and never answers.

Roster's workers wait on it as on a slow GitHub, so a measure of the webhook
intake is not shared with their reads. Connections are kept open until the
process is killed.
"""
import socket
import sys

server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(1024)
held = []
while True:
    connection, _ = server.accept()
    held.append(connection)
