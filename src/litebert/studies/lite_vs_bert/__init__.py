"""The lite-vs-bert study: where ALBERT's speed-up over BERT comes from (bytes held, bytes
sent, compute), measured on this machine and modelled at N ranks."""
