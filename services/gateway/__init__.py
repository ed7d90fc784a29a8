"""The browser gateway: the four gRPC services over Connect and gRPC-Web (HTTP/1.1), with the
web app's static files (docs/clients.md, "From a browser")."""
