from heapdb.cli import main

main()
