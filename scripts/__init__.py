"""Entry points only: each a thin command line (`make run`, `make stop`, `make
revision`) over devkit/ and provider/. Nothing imports them."""
