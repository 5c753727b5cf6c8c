"""The wire: base-protocol frames from an untrusted stdin and pygls' protocol with every request answered."""
