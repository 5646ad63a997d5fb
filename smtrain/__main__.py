from smtrain.cli.commands import main

main(prog_name="smtrain")
