from smtrain.cli import main

main(prog_name="smtrain")
