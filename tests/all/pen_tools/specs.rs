//! What each tool declares: its access and which fields are paths.

use super::*;

#[test]
fn each_tool_declares_its_access_and_path_fields() {
    let table = [
        ("read_file", Access::Read, vec!["path"]),
        ("list_directory", Access::Read, vec!["path"]),
        ("find_files", Access::Read, vec!["path"]),
        ("search_files", Access::Read, vec!["path"]),
        ("write_file", Access::ReadWrite, vec!["path"]),
        ("edit_file", Access::ReadWrite, vec!["path"]),
        ("move_file", Access::ReadWrite, vec!["from", "to"]),
        ("delete_file", Access::ReadWrite, vec!["path"]),
    ];
    for (name, access, path_fields) in table {
        let spec = tool(name).spec();
        assert_eq!(spec.name, name);
        assert_eq!(spec.access, access, "{name}");
        assert_eq!(spec.path_fields, path_fields, "{name}");
        assert_eq!(
            spec.parameters["additionalProperties"],
            json!(false),
            "{name}"
        );
    }
}
