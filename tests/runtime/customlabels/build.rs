fn main() {
    custom_labels::build::emit_build_instructions();
}
