from memd.cli import main

main()
