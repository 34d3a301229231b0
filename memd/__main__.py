from memd.cli.launch import main

main()
