"""The bundled demo sites: generated news, reprints, a novel and its pirate copy, served on 127.0.0.1."""
